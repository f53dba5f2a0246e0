import { BadRequestException, Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { createItem, getItem, Item } from './items';

/** The same controller on either HTTP adapter. */
@Controller()
export class ItemsController {
  @Get('items/:id')
  get(@Param('id') id: string): Item {
    return getItem(id);
  }

  @Post('items')
  @HttpCode(201)
  create(@Body() body: unknown): Item {
    const created = createItem(body);
    if (!created.ok) throw new BadRequestException(created.issues);
    return created.item;
  }

  @Get('health/ready')
  ready() {
    return { status: 'ok' };
  }

  @Get('health/live')
  live() {
    return { status: 'ok' };
  }
}
